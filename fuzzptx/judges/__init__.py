"""Judges: what each says of a program, and how disagreements between them become findings."""

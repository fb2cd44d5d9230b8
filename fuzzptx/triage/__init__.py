"""What happens to findings after a run: buckets and their smallest repros, the known-findings
baseline, and the campaign report."""

"""Profiles of kernel launches (timings, bytes, flops, occupancy) and replays of them in a child
process under Nsight Compute or compute-sanitizer. Public through `gpunb.profile`,
`gpunb.last_profile` and `gpunb.sanitize`."""

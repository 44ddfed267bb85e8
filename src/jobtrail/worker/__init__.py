"""The worker: claims due operations under a lease and carries out what the plan says."""

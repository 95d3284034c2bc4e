"""How the pipeline's jobs run on a machine: GPU slots for local jobs, the SLURM profile's
resources, and the warm-start server that forks CPU jobs from one process that imported torch."""

"""One run's training: the loop (`train`), its training schemes (`schemes`), what runs record
about their triplets (`recording`) and the run folder's fingerprints (`run_folder`)."""

"""The base every part stands on: errors, atomic files and locks, name registries, child processes
that end with their parent, the run's environment record, the machine checks, progress bars."""

"""Layer 7, runner: many files (paths: check_paths, fix_paths), which files and reading
them (discovery), the project model of a run (project_build), the result cache (cache), the
worker processes (pool) and writing fixed files back (writing)."""

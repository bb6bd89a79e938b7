"""One lint run, orchestrated in one place: paths → hosts (paths.py) → lint (hosts.py, workers.py for --jobs) →
suppressions, ignore files and baseline (suppress.py) → the reports it feeds (lint.py), with the configuration
(config.py), the run's options (options.py) and what the run adds up to (summary.py)."""

"""A host directory → its facts: discovery finds the inputs, load reads them into a HostFacts (facts.py),
pgfacts and live_facts turn PostgreSQL's files and a live server's settings into pg.* facts and items."""

"""The domain (models, services, selectors) and the features built on it (search, compaction, imports, the agent)."""

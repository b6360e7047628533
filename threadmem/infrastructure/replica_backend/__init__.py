"""The database backend of DATABASE_REPLICA_URLS' replicas: PostgreSQL's, reporting a failure to connect
(threadmem/infrastructure/replicas/)."""

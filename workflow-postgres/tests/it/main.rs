//! Tests against a throwaway PostgreSQL cluster.


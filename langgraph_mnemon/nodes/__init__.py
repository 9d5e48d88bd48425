"""LangGraph node functions: each unpacks state, calls one layer service, returns an update."""

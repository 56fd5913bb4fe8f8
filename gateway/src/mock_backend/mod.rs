//! `mcpgw mock-backend`: a synthetic MCP server for tests, demos and load tests.

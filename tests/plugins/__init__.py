"""Plugin discovery, activation, loading, the hooks facade and the plugins command."""

"""Layer 4 (read side): the HTTP API. Serves what the store holds; never calls the Hub."""

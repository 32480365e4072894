"""Model providers: the registry, the faux provider and the HTTP APIs."""

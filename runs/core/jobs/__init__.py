"""The jobs' inner loops (one module per job kind), without Django: they talk to an engine client."""

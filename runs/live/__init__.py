"""Step 5: live updates: broadcasting run events to the run socket's Channels group, and the socket itself."""

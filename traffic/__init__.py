"""Real traffic: the recording relay in front of each machine's engine, its records and pages.

`traffic/relay/` is plain async Python (no Django): the relay's ASGI app, the Ollama <-> OpenAI
conversion and the record of one relayed request. The rest is the Django side: the records'
rows, the batched writer, the `relay` command, the live Traffic page and conversations.
"""

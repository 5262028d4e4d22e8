"""A RunProgress that keeps what a job reports, for the core's tests."""


class CollectingProgress:
    def __init__(self):
        self.total = None
        self.samples = []

    async def on_start(self, total):
        self.total = total

    async def on_sample(self, kind, values):
        self.samples.append((kind, values))

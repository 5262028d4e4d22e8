"""A RunProgress that keeps what a job reports, for the core's tests."""


class CollectingProgress:
    def __init__(self):
        self.total = None
        self.samples = []
        self.summaries_so_far = []

    async def on_start(self, total):
        self.total = total

    async def on_sample(self, sample_kind, values):
        self.samples.append((sample_kind, values))

    async def on_summary_so_far(self, summary):
        self.summaries_so_far.append(summary)

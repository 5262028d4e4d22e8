"""daphne as the live server of a browser test, forked from the test process, on its test database."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import SyncToAsync
from channels.layers import channel_layers
from channels.testing import ChannelsLiveServerTestCase
from daphne.testing import DaphneProcess
from django.db import connection

from engines.simulator import SimProfile, serve_in_thread
from runs.worker import dispatch


class ForkedDaphne(DaphneProcess):
    """daphne in a fork of the test process, rid of executors whose threads the fork lost.

    Earlier tests leave asgiref's sync-to-async thread, in-process machine workers and channel
    layers behind; a forked child copies those objects but not their threads, so work handed
    to them would never run (the socket would never accept, the run never advance).
    """

    def run(self) -> None:
        SyncToAsync.single_thread_executor = ThreadPoolExecutor(max_workers=1)
        dispatch._executors.clear()
        channel_layers.backends = {}
        super().run()


class DaphneLiveServerTestCase(ChannelsLiveServerTestCase):
    """A ChannelsLiveServerTestCase whose daphne (a ForkedDaphne) uses this test's database."""

    host = "127.0.0.1"
    ProtocolServerProcess = ForkedDaphne

    @classmethod
    def setUpClass(cls) -> None:
        # Postgres: the server process derives its database name from TEST NAME, and without
        # one it prefixes the name this process already switched to the test database.
        cls._test_db_name = connection.settings_dict["TEST"].get("NAME")
        if not cls._test_db_name:
            connection.settings_dict["TEST"]["NAME"] = connection.settings_dict["NAME"]
        super().setUpClass()

    @classmethod
    def tearDownClass(cls) -> None:
        super().tearDownClass()
        connection.settings_dict["TEST"]["NAME"] = cls._test_db_name


class SimulatorLiveServerTestCase(DaphneLiveServerTestCase):
    """A DaphneLiveServerTestCase with a simulator serving the class's `profile` as `cls.sim`."""

    profile: SimProfile

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.sim = serve_in_thread(cls.profile)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sim.stop()
        super().tearDownClass()

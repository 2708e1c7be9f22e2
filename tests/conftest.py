"""Shared pytest fixtures: free loopback ports and a live MiniWeb server per test module.

The test process is an entry point: it sets up the offline browser environment before any test module is
imported (config.setup_env; harness.make_session would call it again anyway)."""
import asyncio, os

import pytest

os.environ.setdefault("WEBMIX_BACKEND", "local")   # in the test process, where a test's patches reach the units

from webmix.config import setup_env
from webmix.world.servers import Servers, free_ports

setup_env()


@pytest.fixture(scope="module")
def miniweb():
    "One live MiniWeb server (every site spec shipped in the package) for the test module."
    with Servers(ports=free_ports(1)) as srv:
        yield srv


@pytest.fixture(scope="module")
def base(miniweb):
    "The base URL of the module's MiniWeb server, e.g. http://127.0.0.1:40123."
    return miniweb.bases[0]


@pytest.fixture
def free_port():
    "One port free on loopback right now."
    return free_ports(1)[0]


@pytest.fixture(scope="module")
def loop():
    "An event loop for the test module: async work that spans its tests (a browser, a kept one) runs on it."
    lp = asyncio.new_event_loop()
    yield lp
    lp.close()

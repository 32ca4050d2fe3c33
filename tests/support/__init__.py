"""Helpers shared by the whole suite (``from tests.support import ...``): free ports, waits on
positive signals with generous deadlines, a clock the test moves by hand, and modules the test
extra must provide. One copy of each, so a fix to a wait or a port reaches every test."""

from tests.support.clock import START, Clock
from tests.support.modules import in_ci, require_module
from tests.support.ports import free_port
from tests.support.waiting import DEADLINE_S, deadline_scale, wait_for, wait_for_async

__all__ = ["DEADLINE_S", "START", "Clock", "deadline_scale", "free_port", "in_ci", "require_module",
           "wait_for", "wait_for_async"]

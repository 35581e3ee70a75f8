"""Test types: one module per type of test, and the registry that finds a test's type.

=============  ==================================================================
module         type
=============  ==================================================================
``basic``      the basic tests: block sizes x mixes until the stop rule ends them
``sweep``      a bulk-I/O sweep (``modes``): buffer size x count x mode
``copy``       a copy test (``kind = "copy"``), run by ``copyrun``, not fio
``vfile``      a virtual-file test (``nodes``): operation x threads x cache state
``staged/``    the tests of several stages: ``hir``, ``xsr``, ``intensity``
               (``cbw`` and ``dirth``), with ``common``
``replay``     a captured workload (``replay = true``, profile ``rwsw``)
=============  ==================================================================

:func:`of_spec` finds the type of a profile's test and :func:`of_plan` that of a
stored one (its ``test.json``); the interface is :class:`.base.TestType`.  Adding a
test type is a module here, its entries in :data:`TYPES` and :data:`CHECKED`, and its
templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tkbench.kinds.base import Context, KeyRules, TestKeys, TestType
from tkbench.kinds.basic import BASIC
from tkbench.kinds.copy import COPY
from tkbench.kinds.replay import REPLAY
from tkbench.kinds.staged.hir import HIR
from tkbench.kinds.staged.intensity import INTENSITY
from tkbench.kinds.staged.xsr import XSR
from tkbench.kinds.sweep import SWEEP
from tkbench.kinds.vfile import VFILE

if TYPE_CHECKING:
    from tkbench.profile.model import TestSpec
    from tkbench.rundir.records import TestPlan

# asked in this order; the basic type, last, claims every test the others do not
TYPES: tuple[TestType, ...] = (COPY, HIR, XSR, INTENSITY, SWEEP, VFILE, REPLAY, BASIC)

# each type checks a profile's test in this order (check_keys): the basic type's
# checks are every test's, and a type may refuse what an earlier one filled in
CHECKED: tuple[TestType, ...] = (BASIC, HIR, XSR, INTENSITY, SWEEP, COPY, VFILE, REPLAY)
assert set(CHECKED) == set(TYPES)

__all__ = [
    "CHECKED",
    "TYPES",
    "Context",
    "KeyRules",
    "TestKeys",
    "TestType",
    "check_keys",
    "named",
    "of_keys",
    "of_plan",
    "of_spec",
]


def of_spec(spec: TestSpec) -> TestType:
    """The type of a profile's test."""
    return next(t for t in TYPES if t.claims(spec))


def check_keys(k: TestKeys) -> TestType:
    """Every type's checks of a profile's test (:data:`CHECKED`), and the type it is."""
    for ty in CHECKED:
        ty.check_keys(k)
    return of_keys(k)


def of_keys(k: TestKeys) -> TestType:
    """The type of a profile's test as its keys stand after every type's check
    (:func:`check_keys`), before they are a :class:`TestSpec`."""
    return next(ty for ty in TYPES if ty.claims_keys(k))


def of_plan(plan: TestPlan) -> TestType:
    """The type of a stored test (its ``test.json``)."""
    return next(t for t in TYPES if t.stored(plan))


def named(name: str) -> TestType:
    for t in TYPES:
        if t.name == name:
            return t
    raise KeyError(name)

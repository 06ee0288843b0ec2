"""Public contract checks for what plugs into asyncfl, as scikit-learn ships ``check_estimator``.

``check_strategy(name or section)``, ``check_availability_kind(name or KIND)``,
``check_server_mode(name or MODE)``, ``check_server_optimizer(name or OPTIMIZER)`` and
``check_selection_kind(name or KIND)`` run every check that applies to one registration and raise
AssertionError with a message on the first broken contract, except for the checks the caller expects to fail
(``expected_failed_checks={"check_name": "why"}``, reported as outcomes: :mod:`asyncfl.testing.suite`); each
check is also a plain function of its module
(:mod:`asyncfl.testing.strategy`, :mod:`~asyncfl.testing.availability`, :mod:`~asyncfl.testing.server_mode`,
:mod:`~asyncfl.testing.server_optimizer`, :mod:`~asyncfl.testing.selection`) that can be called alone.  For
pytest, :func:`asyncfl.testing.parametrize.parametrize_with_checks` turns registrations into one test
case per (registration, check) pair.  Registrations state what the
checks must know instead of the checks naming them: an algorithm's ``tags`` (an ``AlgorithmTags``) and a
selection kind's (a ``SelectionTags``), by which the suites choose their checks, and an availability kind's,
a server mode's and a selection kind's ``examples``.
"""

from asyncfl.testing.algorithm import Algorithm
from asyncfl.testing.availability import check_availability_kind
from asyncfl.testing.selection import check_selection_kind
from asyncfl.testing.server_mode import check_server_mode
from asyncfl.testing.server_optimizer import check_server_optimizer
from asyncfl.testing.strategy import check_strategy

__all__ = [
    "Algorithm",
    "check_availability_kind",
    "check_selection_kind",
    "check_server_mode",
    "check_server_optimizer",
    "check_strategy",
]

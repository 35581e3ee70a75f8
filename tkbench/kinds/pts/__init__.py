"""The SNIA PTS 2.0.2 requirement rows as data a test type carries (pure).

:mod:`.rows` is a row's shape (:class:`.rows.Requirement`, its :class:`.rows.Source`,
what it is judged with), :mod:`.common` the rows every PTS test shares and the
constants they share, :mod:`.words` how rows word values.  A type's own rows are in
its module (the tests of several stages: :mod:`tkbench.kinds.staged.rows`);
:mod:`tkbench.conformance` collects them from the registry and judges plans and runs
by them.
"""

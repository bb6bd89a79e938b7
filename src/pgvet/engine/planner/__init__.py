"""One target configuration per host: every fix pgvet prints or writes is a part of it.

A rule's fix proposes values computed on the host it is evaluated on. On the host as it is, those proposals
contradict each other: a huge page pool sized for the shared_buffers another rule lowers, an overcommit
ratio computed for the pool being replaced. The planner works out one target instead — kernel and
PostgreSQL together, in dependency order:

- A setting is decided before the settings whose rules read it (shared_buffers before the huge page pool,
  the pool before vm.overcommit_ratio, that before work_mem): the order comes from the facts each rule reads
  (its conditions, fix and derived formulas), a setting's *stage*. Settings whose rules read each other are
  decided together, in rounds, until the proposals stop changing.
- Each stage is evaluated on a *world*: the host's facts with the target's values of the settings decided
  so far, and what the kernel and PostgreSQL then show — the measured facts (meminfo's CommitLimit and huge
  pages, a live server's shared_memory_size) replaced by the derived formulas that predict them
  (``predicts:`` in rules/), whenever a planned change reaches what they read.
- The target is then checked against invariants that no rule states alone (a fix must never stop a
  server or starve a host): CommitLimit above what is already committed, a pool that leaves the OS its
  memory, huge_pages = on only with a pool PostgreSQL fits in, no hot-standby minimum lowered, work_mem
  lowered only when the budget needs it, no finding a fix would bring, no proposal left that the target
  itself contradicts. A setting that breaks one is kept as it is — *pinned*, with the reason, for the
  by-hand list — and the target is worked out again.

docs/planner.md describes it for users; tests/plan/ applies targets as the kernel would and lints again.
"""

from pgvet.engine.planner.planner import Planner
from pgvet.engine.planner.target import Change, HandStep, Setting, Target

__all__ = ["Change", "HandStep", "Planner", "Setting", "Target"]

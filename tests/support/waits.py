"""How long a test waits for something that should happen before it calls it a hang.

A wait in a test ends on the event it waits for; its deadline only stops a hang from holding the
suite. On a busy machine (load 15 on two cores, as when several people test at once) a server
started from scratch has taken more than two minutes to come up, so a deadline is never a guess
at how long something takes: it is this bound, the same everywhere."""

HANG_SECONDS = 600

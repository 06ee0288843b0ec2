"""Published device traces turned into asyncfl's trace files, offline, before any run:
:mod:`.convert` (the formats, the client-to-entry draw, writing the CSV files), :mod:`.fedscale` and
:mod:`.flash` (reading each source's entries), :mod:`.windows` (repeating online windows) and
:mod:`.unpickle` (pickles read as plain data only).  Reading a trace file during a run is the timing
world's (:mod:`asyncfl.sim.tracefiles`)."""

"""What the volume test types measured, read back from their stored rounds (pure): a
bulk-I/O sweep's cells (:mod:`.sweep`), a virtual file's (:mod:`.vfile`), a copy
test's rows (:mod:`.copy`).  Each is its type's own analysis: their points are cells
of their own tables, not block size x mix points."""

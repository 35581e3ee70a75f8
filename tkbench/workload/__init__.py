"""Your own workload: capture a server's block I/O, reduce it, replay it on a drive.

:mod:`.capture` traces a block device with blktrace; :mod:`.trace` holds the trace
(offsets, sizes, directions and times: never data) and reads blktrace's records;
:mod:`.reduce` reduces it to streams, shares, rates, queue depth and LBA heat;
:mod:`.tkw` is the versioned workload file; :mod:`.fiojobs` the fio jobs that replay
it natively or apply its main streams as one job.  docs/replay.md tells the story.
"""

"""The profiler (`morphax.profiler`): trace sessions written as Chrome/Perfetto trace files
(session.py), user annotations (annotations.py), reading traces back (profile_data.py) and the
pprof memory profile of live arrays (memory.py). The recording itself is `_src/events.py`.
"""

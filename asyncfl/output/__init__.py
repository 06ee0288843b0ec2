"""What a run writes and how it is read back: the CSV text rule (:mod:`.csv_text`), the one writer
(:mod:`.writing`), every run file's columns (:mod:`.columns`), the run directory (:mod:`.run_directory`),
the one reader (:mod:`.reading`), tables over pandas (:mod:`.tables`), statistics over a run's clients that
figures and studies share (:mod:`.client_statistics`), making output directories (:mod:`.folders`) and
holding one against a second writer (:mod:`.lock`).  Nothing here decides what the command line prints."""

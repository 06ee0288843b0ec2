"""What a run writes: the file primitives (:mod:`.files`), every run file's columns (:mod:`.columns`),
the run directory (:mod:`.run_directory`), making output directories (:mod:`.folders`) and holding one
against a second writer (:mod:`.lock`).  Nothing here decides what the command line prints."""

-- PostgreSQL 3: the word indexes take each write as it is made (`fastupdate` off). With it on,
-- new entries wait in a pending list that every search reads whole until a vacuum merges it: up
-- to 4 MB, milliseconds added to each search of a history that is being written to (a history
-- search on 20k freshly written messages: 17 ms at the median, 7 ms once merged). A write
-- pays for its own entries instead, which the store benchmark measures.
ALTER INDEX message_search_words SET (fastupdate = off);
ALTER INDEX memory_search_words SET (fastupdate = off);
ALTER INDEX memory_search_text SET (fastupdate = off);
ALTER INDEX chunks_words SET (fastupdate = off);
-- What already waits is merged now.
SELECT gin_clean_pending_list('message_search_words'::regclass);
SELECT gin_clean_pending_list('memory_search_words'::regclass);
SELECT gin_clean_pending_list('memory_search_text'::regclass);
SELECT gin_clean_pending_list('chunks_words'::regclass);

-- Parts of `events` stay Compact (all columns in one data file) up to 100 MiB of uncompressed
-- rows, rather than the engine's 10 MiB. A Wide part writes a file per column and substream
-- (every Map bucket of property_map, every size stream, each with its marks), and creating that
-- many files is most of what writing a part costs the kernel: the INSERTs' parts are Compact
-- already, but the merges of the first levels turned each few INSERTs' rows into a Wide part, and
-- every later merge of the current month rewrote those rows into one again. Large parts (a month
-- merged, schema/240) are still Wide, so a read of a few columns of old data reads only those
-- columns' files. What it saves and what the reads pay: bench/ingest/README.md.
ALTER TABLE events MODIFY SETTING min_bytes_for_wide_part = 104857600;

-- Event reads: what the engine derives from the stored events so that the reads do not scan
-- every row of their columns. Invariant: both are computed by the engine at INSERT from the
-- columns the write path already sends (it sends neither), and both stay exact under the one
-- mutation events get, the user deletion (lightweight DELETE). docs/architecture.md ("Reads").
--
-- 1. event_hours: an aggregate projection, the events counted per (organization, hour, type,
--    event_name). The engine keeps it in every part beside the rows it counts, merges it with
--    them, and rebuilds it in the parts a lightweight DELETE touches
--    (lightweight_mutation_projection_mode = 'rebuild'): a deleted user's events leave the
--    projection in the same mutation that masks their rows, so no read ever sees one without the
--    other. A read whose GROUP BY and WHERE are expressions of its keys is answered from it
--    (src/events/read/hours.ts): whole hours from the projection, the partial hours at the
--    range's and the buckets' edges from the rows.
ALTER TABLE events MODIFY SETTING lightweight_mutation_projection_mode = 'rebuild';

ALTER TABLE events ADD PROJECTION IF NOT EXISTS event_hours
    (SELECT org_id, toStartOfHour(timestamp), type, event_name, count() GROUP BY org_id, toStartOfHour(timestamp), type, event_name);

-- Parts written before this migration get the projection by a background mutation; until a part
-- has it, reads of that part use its rows (the answer is the same).
ALTER TABLE events MATERIALIZE PROJECTION event_hours;

-- 2. property_values: the top-level keys of `properties` as typed subcolumns (the JSON type keeps
--    one subcolumn per path), so a property filter or group_by reads one key's subcolumn instead of
--    parsing every row's JSON text. Paths and values are encoded so that the JSON type neither
--    splits nor reinterprets them:
--    - path: 'k' || lower(hex(key)) (a key with dots is not a nested path; '' is a valid key);
--    - value: a one-letter JSON type tag then the value: 's' + the string, 'n' + the number's
--      JSON text, 'b' + true/false, 'o' + the JSON text of an object or array; a null value has no
--      path (as an absent key). Every value is a string, so no string is ever read as a date or
--      a number.
--    A properties text that repeats a key (the write path stores JSON.stringify output, which
--    never does) gets no paths: the JSON type would refuse the INSERT otherwise.
ALTER TABLE events ADD COLUMN IF NOT EXISTS property_values JSON MATERIALIZED CAST(CAST(
    arrayMap(kv -> (concat('k', lower(hex(kv.1))), multiIf(
            JSONType(kv.2) = 'String', concat('s', JSONExtractString(kv.2)),
            JSONType(kv.2) IN ('Int64', 'UInt64', 'Double'), concat('n', kv.2),
            JSONType(kv.2) = 'Bool', concat('b', kv.2),
            concat('o', kv.2))),
        arrayFilter(kv -> JSONType(kv.2) != 'Null', if(
            length(arrayDistinct(arrayMap(kv -> kv.1, JSONExtractKeysAndValuesRaw(properties)))) = length(JSONExtractKeysAndValuesRaw(properties)),
            JSONExtractKeysAndValuesRaw(properties), []))),
    'Map(String, String)'), 'JSON');

ALTER TABLE events MATERIALIZE COLUMN property_values;

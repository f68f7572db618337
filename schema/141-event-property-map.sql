-- The typed property values as a Map column the service sends, in place of schema/090's
-- property_values (a JSON column the engine derived from the `properties` text at every INSERT).
-- The engine parsed the JSON text of every row at INSERT and then kept one dynamic subcolumn per
-- property key through every merge: together most of its CPU per stored event
-- (bench/ingest/README.md, "What each structure costs"). The service's encoder already walks the
-- properties once (src/events/encode.ts) and writes the same typed values here.
--
-- property_map: one entry per top-level key of `properties` whose value is not null; the value a
-- one-letter JSON type tag then the value: 's' + the string, 'n' + the number's JSON text, 'b' +
-- true/false, 'o' + the JSON text of an object or array (src/events/rows.ts propertyMapValue).
-- A read of one key looks it up (src/events/read/compile.ts): '' when absent or null.
-- The DEFAULT computes the same map from the JSON text, for the rows of parts written before this
-- column (the rewrite below) and for a writer that leaves the column out (the seed), as schema/090
-- did: a text that repeats a key (JSON.stringify never writes one), or that the engine's JSON
-- parser refuses (an integer literal beyond 64 bits, e.g. 1e20 as JSON.stringify writes it), gets
-- an empty map. The engine writes a number's JSON text its own way (1e21, not JSON.stringify's
-- 1e+21): a number's sign of exponent is put back here; inside an object's text it stays as the
-- engine writes it. test/integration/event-property-map.test.ts holds the two to agreeing.

-- Merged parts store the map's entries in 16 buckets by key hash (with_buckets), so a lookup of
-- one key reads one bucket's keys and values, not every entry of every row; parts written by an
-- INSERT keep the plain form (the INSERT stays cheap; they are small until merged). The maps here
-- are small (a few keys a row), below the engine's default threshold for bucketing: hence the
-- constant count and no threshold. Set first, so that the rewrite below writes the buckets.
ALTER TABLE events MODIFY SETTING map_serialization_version = 'with_buckets', map_serialization_version_for_zero_level_parts = 'basic',
    map_buckets_strategy = 'constant', max_buckets_in_map = 16, map_buckets_min_avg_size = 0;

ALTER TABLE events ADD COLUMN IF NOT EXISTS property_map Map(String, String) DEFAULT CAST(
    arrayMap(kv -> (kv.1, multiIf(
            JSONType(kv.2) = 'String', concat('s', JSONExtractString(kv.2)),
            JSONType(kv.2) IN ('Int64', 'UInt64', 'Double'), concat('n', replaceRegexpOne(kv.2, 'e([0-9])', 'e+\\1')),
            JSONType(kv.2) = 'Bool', concat('b', kv.2),
            concat('o', kv.2))),
        arrayFilter(kv -> JSONType(kv.2) != 'Null', if(
            length(arrayDistinct(arrayMap(kv -> kv.1, JSONExtractKeysAndValuesRaw(properties)))) = length(JSONExtractKeysAndValuesRaw(properties)),
            JSONExtractKeysAndValuesRaw(properties), []))),
    'Map(String, String)');

ALTER TABLE events DROP COLUMN IF EXISTS property_values;

-- Parts written before this migration get the column (in buckets) by one background mutation that
-- rewrites them with the settings above (a MATERIALIZE COLUMN would keep a wide part's map in the
-- plain form until its next merge, and the parts of past months are seldom merged again). Until a
-- part is rewritten, reads of that part compute the DEFAULT (the answer is the same).
ALTER TABLE events REWRITE PARTS;

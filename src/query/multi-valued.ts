/**
 * Multi-valued group_by levels (a survey response's answers to one question, a user's groups of
 * one type): one row per distinct value, and the marker that lets parent levels count each record
 * once without a hash set of ids (ranked-buckets.ts docCountSql).
 */

/**
 * One row per distinct value (a multi-valued record counts once in each of its values), or one
 * NULL row when there is none, so that the record is not lost from its parent buckets.
 * `valuesSql` is an Array(String) expression. The joined tuple is (value, its 1-based position,
 * level) under the alias `level<N>_j`:
 * - the position lets the parent levels count each record once without uniqExact(id) (see
 *   isFirstOfLevelSql and ranked-buckets.ts);
 * - the level number keeps the arrayJoin distinct: the engine merges identical arrayJoin
 *   expressions into one (zipping instead of multiplying), which would break the same rule given
 *   twice (a co-occurrence matrix of one question's answers).
 */
export function eachDistinctOrNull(valuesSql: string, alias: string, level: number): string {
  const values = `if(empty(arrayDistinct(${valuesSql}) AS ${alias}_values), [NULL], CAST(${alias}_values, 'Array(Nullable(String))')) AS ${alias}_list`;
  return `tupleElement(arrayJoin(arrayMap((v, i) -> (v, i, ${level}), ${values}, arrayEnumerate(${alias}_list))) AS ${alias}_j, 1)`;
}

/**
 * True on the row of the FIRST value of a multi-valued level (its eachDistinctOrNull must be in
 * the query). A record yields, for one parent bucket, the product of its deeper levels' value
 * lists; exactly one of those rows has the first value at every deeper multi-valued level.
 */
export function isFirstOfLevelSql(level: number): string {
  return `tupleElement(level${level}_j, 2) = 1`;
}

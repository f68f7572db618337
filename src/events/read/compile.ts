/**
 * Pure compiler: event filter nodes -> SQL conditions over `events` (schema/002, 141). Values only
 * travel as query parameters; the only text spliced into SQL is column names, operators and type
 * literals from this file, and a property's key as the hex of its bytes (`unhex('<hex>')`, so
 * nothing of the key but [0-9a-f] reaches the SQL text). The user's
 * current properties and groups are read through the scoped sub-selects of EventSource (org guard
 * included).
 */
import type { EventFilterNode, JsonTest, Scalar } from './filters.ts';
import { DT64, type ParamBag } from '../../clickhouse/sql.ts';
import { textBeforeAfterSql } from '../../query/filter-args.ts';

/** What the compiler reads through the guarded source (EventSource, source.ts, which compiles its filters with this module). */
export interface UserSets {
  readonly bag: ParamBag;
  usersWithProperty(keyParam: string, cond: string): string;
  usersInGroups(groupIdsParam: string): string;
}

export function compileEventFilter(node: EventFilterNode, source: UserSets): string {
  const positive = positiveExpr(node, source);
  return node.negate ? `NOT (${positive})` : positive;
}

function positiveExpr(node: EventFilterNode, source: UserSets): string {
  const bag = source.bag;
  switch (node.kind) {
    case 'type':
      return node.op === 'eq' ? `type = ${bag.add(node.values[0], 'String')}` : `type IN ${bag.add(node.values, 'Array(String)')}`;
    case 'user_id':
      return node.op === 'eq' ? `user_id = ${bag.add(node.values[0], 'UUID')}` : `has(${bag.add(node.values, 'Array(UUID)')}, user_id)`;
    case 'group_id':
      return `user_id IN (${source.usersInGroups(bag.add(node.values, 'Array(UUID)'))})`;
    case 'property':
      return jsonTestSql(node.test, propertyValue(node.key), bag);
    case 'user_property': {
      const key = bag.add(node.key, 'String');
      // null: the user has no such property, or its value is null. A user without the property
      // has no row to test, so null is the complement of "has a non-null value".
      if (node.test.op === 'null') return `user_id NOT IN (${source.usersWithProperty(key, `NOT ${rawJsonValue('value').isNull}`)})`;
      return `user_id IN (${source.usersWithProperty(key, jsonTestSql(node.test, rawJsonValue('value'), bag))})`;
    }
    default:
      // A plain String column, '' when the event does not carry the field.
      switch (node.op) {
        case 'null': return `${node.kind} = ''`;
        case 'eq': return `${node.kind} = ${bag.add(node.values[0], 'String')}`;
        case 'in': return `${node.kind} IN ${bag.add(node.values, 'Array(String)')}`;
        case 'contains': return `positionCaseInsensitiveUTF8(${node.kind}, ${bag.add(node.values[0], 'String')}) > 0`;
      }
  }
}

/** How to read one JSON value: what JSON type it is (each never NULL), and its value as a string, a number, a boolean. */
export interface JsonValueSql {
  /** Absent, or the JSON null. */
  isNull: string;
  isString: string;
  isNumber: string;
  isBool: string;
  string: string;
  number: string;
  bool: string;
  /** The bucket key: a string by its value, any other JSON by its text; NULL when absent or null. */
  key: string;
  /**
   * The value's type letter and text in one string, when it is stored so (propertyValue): a string
   * or boolean equals a value exactly when this equals the value's letter and text, one comparison
   * instead of a type test and a substring. Numbers still compare as numbers (1 = 1.0).
   */
  tagged?: string;
}

/**
 * A top-level key of the event's `properties`, looked up in `property_map` (schema/141): '' when
 * the key is absent or null, otherwise a type tag (s, n, b, o) and the value.
 */
export function propertyValue(key: string): JsonValueSql {
  const v = `property_map[unhex('${Buffer.from(key, 'utf8').toString('hex')}')]`;
  const body = `substring(${v}, 2)`;
  return {
    isNull: `${v} = ''`,
    isString: `startsWith(${v}, 's')`,
    isNumber: `startsWith(${v}, 'n')`,
    isBool: `startsWith(${v}, 'b')`,
    string: body,
    number: `toFloat64OrZero(${body})`,
    bool: `(${v} = 'btrue')`,
    key: `if(${v} = '', NULL, ${body})`,
    tagged: v,
  };
}

/** A column holding a raw JSON value (user_properties.value: '"pro"', '42', 'true', 'null'). */
export function rawJsonValue(column: string): JsonValueSql {
  const type = `JSONType(${column})`;
  return {
    isNull: `${type} = 'Null'`,
    isString: `${type} = 'String'`,
    isNumber: `${type} IN ('Int64', 'UInt64', 'Double')`,
    isBool: `${type} = 'Bool'`,
    string: `JSONExtractString(${column})`,
    number: `JSONExtractFloat(${column})`,
    bool: `JSONExtractBool(${column})`,
    key: `if(${type} = 'String', JSONExtractString(${column}), nullIf(nullIf(${column}, ''), 'null'))`,
  };
}

/**
 * The condition on one JSON value, typed by the filter value: strings match string values, numbers
 * numeric values (numerically), booleans boolean values. A missing key reads as JSON null.
 */
export function jsonTestSql(test: JsonTest, json: JsonValueSql, bag: ParamBag): string {
  switch (test.op) {
    case 'null':
      return json.isNull;
    case 'eq':
    case 'in': {
      const strings = test.values.filter((x): x is string => typeof x === 'string');
      const numbers = test.values.filter((x): x is number => typeof x === 'number');
      const bools = [...new Set(test.values.filter((x): x is boolean => typeof x === 'boolean'))];
      const branches: string[] = [];
      if (json.tagged !== undefined) {
        const texts = [...strings.map((s) => `s${s}`), ...bools.map((b) => `b${b}`)];
        if (texts.length) branches.push(oneOf(json.tagged, texts, 'String', bag));
      } else {
        if (strings.length) branches.push(`(${json.isString} AND ${oneOf(json.string, strings, 'String', bag)})`);
        if (bools.length) branches.push(`(${json.isBool} AND ${oneOf(json.bool, bools, 'Bool', bag)})`);
      }
      if (numbers.length) branches.push(`(${json.isNumber} AND ${oneOf(json.number, numbers, 'Float64', bag)})`);
      return branches.length === 1 ? branches[0] : `(${branches.join(' OR ')})`;
    }
    case 'contains':
      return `(${json.isString} AND positionCaseInsensitiveUTF8(${json.string}, ${bag.add(test.value, 'String')}) > 0)`;
    case 'lt':
    case 'gt': {
      const cmp = test.op === 'gt' ? '>' : '<';
      return typeof test.value === 'number'
        ? `(${json.isNumber} AND ${json.number} ${cmp} ${bag.add(test.value, 'Float64')})`
        : `(${json.isString} AND ${json.string} ${cmp} ${bag.add(test.value, 'String')})`;
    }
    case 'before':
    case 'after':
      // Only string values that look like an ISO date take part.
      return `(${json.isString} AND ${textBeforeAfterSql(test.op, json.string, bag.add(test.value, DT64))})`;
  }
}

function oneOf(expr: string, values: readonly Scalar[], type: string, bag: ParamBag): string {
  return values.length === 1 ? `${expr} = ${bag.add(values[0], type)}` : `has(${bag.add(values, `Array(${type})`)}, ${expr})`;
}


/**
 * Text length limits count characters (Unicode code points), as the contract's "100 chars" means
 * and as JSON Schema's maxLength does: `.length` counts UTF-16 code units, so an emoji (one
 * character, two units) counted twice and 51 emoji failed a 100-character limit.
 */
import * as v from 'valibot';

/**
 * `v.maxLength` that counts code points. It keeps maxLength's shape (type `max_length`,
 * `requirement`), so @valibot/to-json-schema emits `maxLength` for it, which JSON Schema already
 * counts in characters; only the check itself is valibot's maxCodePoints.
 */
export function maxChars<TInput extends string>(requirement: number, message?: string): v.MaxLengthAction<TInput, number, string | undefined> {
  const codePoints = v.maxCodePoints<TInput, number, string | undefined>(requirement, message);
  return {
    ...v.maxLength<TInput, number, string | undefined>(requirement, message),
    '~run': (dataset, config) => codePoints['~run'](dataset, config),
  };
}

/** Number of characters (code points) of `s`. */
export function charCount(s: string): number {
  let count = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const unit = s.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

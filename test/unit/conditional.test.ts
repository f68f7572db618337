import { expect } from 'chai';
import { matchesIfNoneMatch, taggedJson } from '../../src/server/conditional.ts';

describe('conditional answers: ETag and If-None-Match', () => {
  it('the tag ignores the leading took, and changes with anything else', () => {
    const a = taggedJson({ took: 12, hits: { total: { value: 3 } } });
    const b = taggedJson({ took: 480, hits: { total: { value: 3 } } });
    const c = taggedJson({ took: 12, hits: { total: { value: 4 } } });
    expect(a.etag).to.equal(b.etag);
    expect(a.etag).to.not.equal(c.etag);
    expect(JSON.parse(b.json)).to.deep.equal({ took: 480, hits: { total: { value: 3 } } }); // sent as is
    expect(taggedJson({ completion: { a: 1 } }).etag).to.not.equal(taggedJson({ completion: { a: 2 } }).etag);
    expect(a.etag).to.match(/^"[\w-]{27}"$/);
  });

  it('If-None-Match: a list, weak tags and * match; another tag does not', () => {
    expect(matchesIfNoneMatch('"x", W/"t"', '"t"')).to.equal(true);
    expect(matchesIfNoneMatch('*', '"t"')).to.equal(true);
    expect(matchesIfNoneMatch('"u"', '"t"')).to.equal(false);
    expect(matchesIfNoneMatch(undefined, '"t"')).to.equal(false);
  });
});

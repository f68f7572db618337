import { expect } from 'chai';
import { MAX_EVENT_BATCH_BYTES, MAX_EVENT_ITEM_BYTES, escapedJsonLength, worstCaseItems } from '../../src/events/limits.ts';
import { MAX_PROPERTIES_BYTES, parseEventBatch } from '../../src/events/schema.ts';

describe('event body limit (derived from the contract)', () => {
  it('is computed from items the schema accepts, one of each kind at every maximum', () => {
    const items = worstCaseItems();
    expect(items.map((i) => i.type)).to.have.members(['identify', 'track', 'group.unassign', 'page', 'screen', 'copilot']);
    expect(parseEventBatch(items)).to.have.length(items.length);
  });

  it('counts a character at its longest escape: 12 bytes astral, 6 otherwise', () => {
    expect(escapedJsonLength('\u{1F600}é')).to.equal(2 + 12 + 6);
    expect(escapedJsonLength({ a: ['b', 1, null] })).to.equal('{"\\u0061":["\\u0062",1,null]}'.length);
  });

  it('is 100 of the largest item (copilot) plus properties at 6 wire bytes per stored byte', () => {
    const copilot = escapedJsonLength(worstCaseItems().find((i) => i.type === 'copilot'));
    // prompt + response alone: 2 x (10,000 x 12 + 2).
    expect(copilot).to.be.above(240_004);
    expect(MAX_EVENT_ITEM_BYTES).to.equal(copilot + 1 + escapedJsonLength('properties') + 1 + 6 * MAX_PROPERTIES_BYTES);
    expect(MAX_EVENT_BATCH_BYTES).to.equal(2 + 100 * MAX_EVENT_ITEM_BYTES + 99);
  });
});

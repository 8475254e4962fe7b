import { findDuplicateKey } from './json-body-parser.js';

describe('findDuplicateKey', () => {
  it.each([
    ['{"externalId":"a","externalId":"b"}', 'externalId'],
    ['{"taxpayer":{"country":"DE","name":"x","country":"FR"}}', 'taxpayer.country'],
    ['{"metadata":{"k":"1"},"a":1,"metadata":{}}', 'metadata'],
    ['{"items":[{"a":1},{"b":1,"b":2}]}', 'items[1].b'],
    ['[[0],{"x":{"y":[1,{"z":1,"z":1}]}}]', '[1].x.y[1].z'],
    ['{"a":1,"\\u0061":2}', 'a'],
    ['{ "s" : "a \\" , \\"s\\": {" , "s" : 2 }', 's'],
    ['{"":1,"":2}', ''],
  ])('finds the duplicate in %s at %j', (text, field) => {
    expect(findDuplicateKey(text)).toEqual({ field, message: 'appears more than once in its object' });
  });

  it.each(['{"a":1,"b":{"a":1},"c":[{"a":1},{"a":2}]}', '{"s":"\\"a\\":1,\\"a\\":2"}', '{"a":{"b":1},"b":{"a":1}}', '[1,2,"a","a"]', '"text"', '{}'])(
    'finds none in %s',
    (text) => {
      expect(findDuplicateKey(text)).toBeNull();
    },
  );
});

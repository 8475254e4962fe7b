import { AppError } from './app-error.js';
import { decodeCursor, encodeCursor, pageOf } from './cursor.js';

describe('cursors', () => {
  it('decode what they encode, up to the bigint maximum', () => {
    expect(decodeCursor('d', encodeCursor('d', '42'), 'cursor')).toBe('42');
    expect(decodeCursor('d', encodeCursor('d', '9223372036854775807'), 'cursor')).toBe('9223372036854775807');
  });

  it.each([
    ['above the bigint maximum', encodeCursor('d', '9223372036854775808')],
    ['nineteen nines', encodeCursor('d', '9999999999999999999')],
    ['another kind', encodeCursor('e', '1')],
    ['a composite position', encodeCursor('d', '1:2')],
    ['not base64url of a cursor', 'garbage'],
    ['padded', `${encodeCursor('d', '1')}=`],
  ])('refuse %s with a validation error on the parameter', (_name, cursor) => {
    let thrown: unknown;
    try {
      decodeCursor('d', cursor, 'cursor');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).errors).toEqual([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
  });
});

describe('pageOf', () => {
  const cursorOf = (last: number) => `after-${last}`;

  it('keeps `limit` rows and names the last one when a row was left over', () => {
    expect(pageOf([5, 4, 3], 2, cursorOf)).toEqual({ rows: [5, 4], nextCursor: 'after-4' });
  });

  it('has no next page when the rows fit', () => {
    expect(pageOf([5, 4], 2, cursorOf)).toEqual({ rows: [5, 4], nextCursor: null });
    expect(pageOf([], 2, cursorOf)).toEqual({ rows: [], nextCursor: null });
  });
});

/** A source (client application) name, as API keys are bound to it: 2–63 of a-z, 0-9 and -, not starting with -. */
export const SOURCE_PATTERN = /^[a-z0-9][a-z0-9-]{1,62}$/;

export const SOURCE_RULE = 'must be 2-63 characters of a-z, 0-9 and -, starting with a letter or digit';

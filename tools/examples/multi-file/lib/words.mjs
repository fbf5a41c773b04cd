// Wording for the example multi-file tool; sandboxed.
export const describe = (value, from, result, to) => `${value} ${from} is ${Number(result.toPrecision(6))} ${to}`;

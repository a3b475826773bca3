// The sentence the web UI shows for a server-side failure (HTTP 5xx), shared with the tests (src/lib is imported by
// web/ too). Pure: no I/O, no imports.

/**
 * 502 is a payment provider's failure: the server's sentence already says what happened and what to do, so it is
 * shown once, as said (issue 21: it used to read "…please try again in a moment (error 502). Try again in a
 * moment."). Other 5xx get a "try again" hint unless the message already has one.
 */
export function serverErrorText(message: string, code: number): string {
  const said = message.replace(/[.\s]*$/, '');
  if (code === 502) return `${said} (error 502).`;
  const again = /\bagain\b/i.test(message) ? '' : ' Try again in a moment.';
  return `Something went wrong on the server: ${said} (error ${code}).${again}`;
}

/** Small DOM helpers: elements by id, new elements whose text is set as text (never parsed as HTML). */

export const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export const el = (tag: string, props: Record<string, string> = {}, text = ""): HTMLElement => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) node.setAttribute(name, value);
  node.textContent = text;
  return node;
};

/** The header's one line of news: an error, the stream's state, or nothing. */
export const status = (text: string) => {
  $("status").textContent = text;
};

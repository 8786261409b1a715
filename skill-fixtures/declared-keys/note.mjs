// Records a note and counts its words.
export default function note({ text }) {
  const words = text.split(/\s+/).filter(Boolean).length;
  return { note: text.trim(), words };
}

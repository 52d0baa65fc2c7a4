/**
 * A reader of a Server-Sent Events body, for the clients of `turnfold serve` in the tests
 * and the benchmarks: fed the body's chunks as they come, it hands over each whole event
 * that has an id and data (data lines joined with newlines, as the format says).
 */
export function sseReader(onEvent: (id: number, data: string) => void): (chunk: string) => void {
  let buffer = "";
  return (chunk) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: number | undefined;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id: ")) id = Number(line.slice(4));
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (id !== undefined && data.length > 0) onEvent(id, data.join("\n"));
    }
  };
}

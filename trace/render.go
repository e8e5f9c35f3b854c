package trace

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"
	"time"
)

// owners name the component that stamps each step kind.
var owners = map[string]string{
	StepAdmitted: "apiserver", StepStored: "apiserver", StepScheduled: "scheduler", StepBound: "apiserver",
	StepSeen: "kubelet", StepCgroups: "cgroups", StepVolumes: "kubelet/volume", StepSandbox: "sandbox",
	StepNetwork: "cni", StepImage: "image", StepInit: "sandbox", StepContainer: "sandbox", StepReady: "kubelet",
}

// Owner is the podkit package that performs a step.
func Owner(name string) string { return owners[Kind(name)] }

// ms formats a duration in milliseconds with µs precision.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d.Microseconds())/1000) }

// TextOptions shape WriteText.
type TextOptions struct {
	// Title is the first line ("" for none).
	Title string
	// Width is the bar area's width in characters (default 40).
	Width int
}

// WriteText draws the waterfall for a terminal: one line per step with
// its offset and duration in milliseconds, the component that did it, and
// a bar placed on a shared time axis.
func WriteText(w io.Writer, t *Trace, o TextOptions) error {
	if o.Width <= 0 {
		o.Width = 40
	}
	bw := bufio.NewWriter(w)
	rows := t.Rows()
	total := t.Total()
	if o.Title != "" {
		fmt.Fprintln(bw, o.Title)
	}
	nameW := len("step")
	for _, r := range rows {
		nameW = max(nameW, len(r.Name))
	}
	fmt.Fprintf(bw, "  %-*s %10s %10s  %-14s %s\n", nameW, "step", "at (ms)", "took (ms)", "by", "waterfall")
	for _, r := range rows {
		from, to := scale(r.Start, total, o.Width), scale(r.End, total, o.Width)
		bar := strings.Repeat(" ", from) + strings.Repeat("█", to-from)
		if to == from {
			bar += "▏" // a step that took (almost) no time
		}
		note := r.Detail
		if r.Skewed {
			note = strings.TrimSpace(note + " (clock skew)")
		}
		if note != "" {
			bar += " " + note
		}
		fmt.Fprintf(bw, "  %-*s %10s %10s  %-14s %s\n", nameW, r.Name, ms(r.End), ms(r.Took), Owner(r.Name), bar)
	}
	fmt.Fprintf(bw, "  %-*s %10s\n", nameW, "total", ms(total))
	return bw.Flush()
}

func scale(d, total time.Duration, width int) int {
	if total <= 0 {
		return 0
	}
	return int(int64(d) * int64(width) / int64(total))
}

// WriteSVG draws the same waterfall as a standalone SVG picture.
func WriteSVG(w io.Writer, t *Trace, title string) error {
	const (
		rowH, labelW, barW, tookW, pad = 22, 190, 560, 90, 12
	)
	rows := t.Rows()
	total := t.Total()
	width := pad*2 + labelW + barW + tookW
	height := pad*2 + 30 + rowH*(len(rows)+1)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", pad, pad+14, html.EscapeString(title))
	y0 := pad + 30
	fmt.Fprintf(bw, `<text x="%d" y="%d" fill="#555">step</text><text x="%d" y="%d" fill="#555">0 ms</text><text x="%d" y="%d" fill="#555" text-anchor="end">%s ms</text><text x="%d" y="%d" fill="#555" text-anchor="end">took (ms)</text>`+"\n",
		pad, y0+14, pad+labelW, y0+14, pad+labelW+barW, y0+14, ms(total), width-pad, y0+14)
	colors := map[string]string{"apiserver": "#4e79a7", "scheduler": "#f28e2b", "kubelet": "#59a14f", "kubelet/volume": "#76b7b2",
		"cgroups": "#edc948", "sandbox": "#b07aa1", "cni": "#ff9da7", "image": "#9c755f"}
	for i, r := range rows {
		y := y0 + rowH*(i+1)
		x0 := pad + labelW + scale(r.Start, total, barW)
		bwid := max(scale(r.End, total, barW)-scale(r.Start, total, barW), 1)
		color := colors[Owner(r.Name)]
		if color == "" {
			color = "#bab0ac"
		}
		label := r.Name
		if r.Detail != "" {
			label += " (" + r.Detail + ")"
		}
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`, pad, y+14, html.EscapeString(label))
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %s ms at %s ms (%s)</title></rect>`,
			x0, y+3, bwid, rowH-6, color, html.EscapeString(r.Name), ms(r.Took), ms(r.End), Owner(r.Name))
		fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", width-pad, y+14, ms(r.Took))
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

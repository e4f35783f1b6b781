package main

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bar colours: the ratio meets its goal, misses it, or the row has none.
var (
	colourMet    = color.RGBA{R: 0x2e, G: 0x9d, B: 0x4a, A: 0xff}
	colourMissed = color.RGBA{R: 0xd6, G: 0x45, B: 0x3d, A: 0xff}
	colourNoGoal = color.RGBA{R: 0x9a, G: 0x9a, B: 0xa8, A: 0xff}
)

// writeChart draws one bar per row of the table whose workload ran: the
// ratio sluice / Kafka on a log scale (a bar up from 1 means sluice's
// figure is the larger, down the smaller), coloured by whether it meets
// the goal, with the goal drawn as a black dash across the bar;
// a throughput row with the machine's ceiling measured gets a second bar,
// sluice / ceiling, with its own goal.
// The format follows path's extension (.png, .svg, .pdf).
func writeChart(path string, res *results, ran map[string]bool, scalePartitions int) error {
	p := plot.New()
	p.Title.Text = "sluice / " + res.kafkaLabel() + " (and / the machine's ceiling), same machine, same run (log scale; dash: the issue's goal)"
	p.Y.Label.Text = "ratio sluice / " + res.kafkaLabel() + " or / ceiling"

	var labels []string
	var goals plotter.XYs
	var texts plotter.XYLabels
	lo, hi := -1.0, 1.0 // log10 of the axis ends: at least 0.1 to 10
	legend := map[string]plot.Thumbnailer{}
	// addBar draws ratio q (ok: measured) with its goal (0: none; met
	// says whether q meets it).
	addBar := func(label string, q float64, ok bool, goal float64, met func(float64) bool) error {
		x := float64(len(labels))
		labels = append(labels, label)
		if goal > 0 {
			goals = append(goals, plotter.XY{X: x, Y: math.Log10(goal)})
			lo, hi = min(lo, math.Log10(goal)), max(hi, math.Log10(goal))
		}
		if !ok {
			texts.XYs = append(texts.XYs, plotter.XY{X: x, Y: 0})
			texts.Labels = append(texts.Labels, "no data")
			return nil
		}
		y := math.Log10(q)
		lo, hi = min(lo, y), max(hi, y)
		bar, err := plotter.NewBarChart(plotter.Values{y}, vg.Points(28))
		if err != nil {
			return err
		}
		bar.XMin = x
		bar.LineStyle.Width = 0
		switch {
		case goal == 0:
			bar.Color = colourNoGoal
			legend["no goal"] = bar
		case met(q):
			bar.Color = colourMet
			legend["goal met"] = bar
		default:
			bar.Color = colourMissed
			legend["goal missed"] = bar
		}
		p.Add(bar)
		texts.XYs = append(texts.XYs, plotter.XY{X: x, Y: y})
		texts.Labels = append(texts.Labels, strconv.FormatFloat(q, 'g', 2, 64))
		return nil
	}
	for _, m := range metrics {
		if !ran[m.workload] {
			continue
		}
		q, ok := res.ratio(m.key)
		if err := addBar(rowLabel(m, scalePartitions), q, ok, m.goal, m.met); err != nil {
			return err
		}
		if _, has := ceilingModels[m.key]; has && res.machine != nil {
			q, ok := res.ceilingRatio(m.key)
			goal := ceilingGoals[m.key]
			if err := addBar(rowLabel(m, scalePartitions)+" / ceiling", q, ok, goal, func(q float64) bool { return q >= goal }); err != nil {
				return err
			}
		}
	}
	if !slices.ContainsFunc(texts.Labels, func(l string) bool { return l != "no data" }) {
		return fmt.Errorf("no ratio to draw: a chart needs both systems in one run")
	}

	goalMarks, err := plotter.NewScatter(goals)
	if err != nil {
		return err
	}
	goalMarks.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(18), Shape: dashGlyph{}}
	p.Add(goalMarks)
	valueLabels, err := plotter.NewLabels(texts)
	if err != nil {
		return err
	}
	for i := range valueLabels.TextStyle {
		valueLabels.TextStyle[i].XAlign = draw.XCenter
		valueLabels.TextStyle[i].YAlign = draw.YBottom
	}
	p.Add(valueLabels)
	one := plotter.NewFunction(func(float64) float64 { return 0 })
	one.Color = color.Gray{Y: 0x40}
	p.Add(one, plotter.NewGrid())

	for _, name := range []string{"goal met", "goal missed", "no goal"} {
		if t, ok := legend[name]; ok {
			p.Legend.Add(name, t)
		}
	}
	p.Legend.Add("goal", goalMarks)
	p.Legend.Top = true

	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = math.Pi / 5
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Min, p.X.Max = -0.7, float64(len(labels))-0.3
	// Headroom at the top for the legend.
	p.Y.Min, p.Y.Max = math.Floor(lo*2)/2-0.2, math.Ceil(hi*2)/2+0.5
	p.Y.Tick.Marker = ratioTicks{}
	return p.Save(14*vg.Inch, 7*vg.Inch, path)
}

// ratioTicks labels a log10 axis with the ratios themselves.
type ratioTicks struct{}

// Ticks returns a tick at each 1-2-5 ratio between min and max (log10).
func (ratioTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(min); e <= math.Ceil(max); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			y := math.Log10(v)
			if y < min || y > max {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: y, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ticks
}

// dashGlyph draws a horizontal line as wide as the glyph, for a goal mark
// across a bar.
type dashGlyph struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (dashGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.StrokeLine2(draw.LineStyle{Color: sty.Color, Width: vg.Points(2.5)},
		pt.X-sty.Radius, pt.Y, pt.X+sty.Radius, pt.Y)
}

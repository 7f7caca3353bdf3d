// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt from Go: one document, two questions. The second question's prompt
// shares the system prompt and the document with the first, so kvrt reuses
// their K/V from the prefix cache instead of recomputing them.
//
//	PKG_CONFIG_PATH=<prefix>/lib/pkgconfig go run . [model.gguf]
//
// Exits non-zero if the second question reused nothing.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"kvrt"
)

const document = "The Harbour Street Bakery opened in 1987 in the old customs house of Port Ellen. " +
	"It was founded by two sisters, Morag and Isla Campbell, who had trained as pastry cooks in Glasgow. " +
	"The bakery bakes every night from two until six in the morning in a wood-fired oven built in 1902. " +
	"Its most popular bread is a dark rye loaf with caraway seeds, and on Saturdays it sells " +
	"more than four hundred cinnamon buns. In 2015 the bakery won the Scottish Baker of the Year award. " +
	"It employs eleven people and closes every year for the first two weeks of January."

var questions = []string{"When did the bakery open, and who founded it?", "What is the bakery's most popular bread?"}

func modelPath() string {
	if len(os.Args) > 1 {
		return os.Args[1]
	}
	if p := os.Getenv("KVRT_MODEL"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

func run() error {
	if err := kvrt.CheckVersion(); err != nil {
		return err
	}
	model, err := kvrt.LoadModel(modelPath())
	if err != nil {
		return err
	}
	defer model.Close()
	ctx, err := kvrt.NewContext(model, kvrt.ContextOptions{NCtx: 1024, NSeqMax: 2})
	if err != nil {
		return err
	}
	defer ctx.Close()
	var s kvrt.RequestStats
	for q, question := range questions {
		text, err := model.ChatApply([]kvrt.ChatMessage{
			{Role: "system", Content: "Answer the question using only the document. Be brief."},
			{Role: "user", Content: "Document:\n" + document + "\n\nQuestion: " + question},
		}, true)
		if err != nil {
			return err
		}
		prompt, err := model.Tokenize(text, kvrt.TokenizeParseSpecial)
		if err != nil {
			return err
		}
		fmt.Printf("Q%d: %s\nA%d: ", q+1, question, q+1)
		s, err = ctx.Generate(int32(q), prompt, kvrt.GenerateOptions{MaxTokens: 24, OnToken: func(_ int32, piece string) bool {
			fmt.Print(piece)
			return true
		}})
		if err != nil {
			return err
		}
		fmt.Printf("\n   prompt %d tokens: reused %d (from the prefix cache %d), computed %d; generated %d tokens, %.1f tokens/s\n",
			s.PromptTokens, s.ReusedTokens, s.ReusedFromCache, s.ComputedTokens, s.GeneratedTokens, s.DecodeTokensPerSecond)
	}
	fmt.Printf("second question: reused %d of %d prompt tokens from the prefix cache\n", s.ReusedFromCache, s.PromptTokens)
	if s.ReusedFromCache == 0 {
		return fmt.Errorf("expected the shared document to come from the prefix cache")
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

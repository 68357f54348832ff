package models

import (
	"context"
	"net/http"
	"os"
	"time"

	"example.com/agent/internal/config"
	"github.com/openai/openai-go/option"
	openai "github.com/openai/openai-go"
)

type Config struct {
	Timeout time.Duration `env:"MODEL_TIMEOUT" json:"timeout,omitempty"`
	Model   struct {
		Name string
	}
}

type Client struct {
	cfg    Config
	http   *http.Client
	client openai.Client
}

func envDuration(key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return def
	}
	return d
}

var modelTimeout = envDuration("MODEL_TIMEOUT", 120*time.Second)

func NewClient(cfg Config) *Client {
	return &Client{cfg: cfg, http: &http.Client{Timeout: cfg.Timeout}}
}

func (c *Client) init() {
	c.client = openai.NewClient(option.WithRequestTimeout(c.cfg.Timeout))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = ctx
	t := config.DefaultTimeout
	_ = t
}

package digitalocean

import "net/http"

func (s *Server) registerAccount() {
	s.handle(http.MethodGet, "/v2/account", s.getAccount)
}

// getAccount: GET /v2/account, which clients use to check their token.
func (s *Server) getAccount(_ *http.Request, _ params) (int, any) {
	return http.StatusOK, &accountRoot{Account: wireAccount{
		DropletLimit:    25,
		FloatingIPLimit: 3,
		ReservedIPLimit: 3,
		VolumeLimit:     100,
		Email:           "sammy@example.com",
		Name:            "Sammy the Shark",
		UUID:            "b6fr89dbf6d9156cace5f3c78dc9851d957381ef",
		EmailVerified:   true,
		Status:          "active",
		StatusMessage:   "",
	}}
}
